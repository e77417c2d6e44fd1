"""agmm.torch's groups (groups.py: a registered agmm.World per name) and
their plan caches (plan_cache.py, the one module that holds them). Imports
nothing else of agmm.torch.
"""
