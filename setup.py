"""`python3 -m pip install --no-build-isolation .`: the CMake step.

The metadata is in pyproject.toml. This adds what setuptools cannot do by
itself (docs/install.md, "pip install"):

- build_py builds libagmm.so with CMake (a Release build of the target
  agmm_shared only) and copies it into the package as agmm/libagmm.so.0.1
  (its SONAME), with an agmm/_libpath.py naming it relative to the package,
  which python/agmm/_lib.py loads. The library links OpenBLAS, and oneDNN,
  hwloc and MPI when the build finds them, from the system (NEEDED; no
  RPATH: they are in the loader's default path on Debian).
- the wheel is tagged py3-none-<platform> (linux_x86_64): it holds a
  compiled library, but no Python extension (ctypes), so any Python 3 on
  that platform can load it.
- setuptools' build directory (build/ by default, the developer's CMake
  build directory in this tree) and its egg-info go to a scratch directory
  removed when the build ends, or to $AGMM_PIP_BUILD_DIR, kept and reused
  (an incremental CMake build on the next pip install).

Environment:
  AGMM_CMAKE_ARGS     more CMake configure arguments, split like a shell
                      line, after the defaults (so they win), e.g.
                      AGMM_CMAKE_ARGS="-DAGMM_ONEDNN=OFF -DAGMM_MPI=OFF"
  AGMM_PIP_BUILD_DIR  setuptools' and CMake's build directory (kept)
  CMAKE               the cmake program (default: cmake on PATH)
  CMAKE_BUILD_PARALLEL_LEVEL  parallel build jobs (default: the CPUs)
"""
import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:  # setuptools >= 70.1 has its own; before, python3-wheel's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

TOP = os.path.dirname(os.path.abspath(__file__))


def _fail(msg):
    sys.exit("agmm setup.py: " + msg)


def _build_base():
    """setuptools' build directory: never the tree's build/."""
    kept = os.environ.get("AGMM_PIP_BUILD_DIR")
    if kept:
        os.makedirs(kept, exist_ok=True)
        return os.path.abspath(kept)
    scratch = tempfile.mkdtemp(prefix="agmm-pip-build.")
    atexit.register(shutil.rmtree, scratch, True)
    return scratch


BUILD_BASE = _build_base()


def _cmake_version():
    with open(os.path.join(TOP, "CMakeLists.txt")) as f:
        m = re.search(r"project\(agmm VERSION ([0-9.]+)", f.read())
    if not m:
        _fail("no 'project(agmm VERSION ...)' in CMakeLists.txt")
    return m.group(1)


class Build(build):
    def initialize_options(self):
        super().initialize_options()
        self.build_base = BUILD_BASE


class BuildPyWithLibrary(build_py):
    """The package's Python files, then libagmm.so built with CMake."""

    def run(self):
        if getattr(self, "editable_mode", False):
            # An editable install imports python/agmm itself: the library
            # would have to be written into the source tree.
            _fail("pip install -e is not supported (the library would go "
                  "into python/agmm); for development use the CMake build "
                  "tree: scripts/build.sh, then PYTHONPATH=build/python")
        super().run()
        self._library_outputs = self._build_library()

    def get_outputs(self, include_bytecode=1):
        return super().get_outputs(include_bytecode) + \
            getattr(self, "_library_outputs", [])

    def _build_library(self):
        version = self.distribution.get_version()
        if version != _cmake_version():
            _fail("pyproject.toml's version %s is not CMakeLists.txt's %s"
                  % (version, _cmake_version()))
        cmake = os.environ.get("CMAKE") or shutil.which("cmake")
        if not cmake:
            _fail("cmake not found (apt-get install cmake, or "
                  "scripts/install-deps.sh; CMAKE names another one)")
        temp = self.get_finalized_command("build").build_temp
        bdir = os.path.abspath(os.path.join(temp, "cmake"))
        extra = shlex.split(os.environ.get("AGMM_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or \
            str(os.cpu_count() or 1)
        self._run([cmake, "-S", TOP, "-B", bdir,
                   "-DCMAKE_BUILD_TYPE=Release"] + extra)
        self._run([cmake, "--build", bdir, "--target", "agmm_shared",
                   "-j", jobs])
        # CMake's own note of what it built (python/CMakeLists.txt):
        # LIBRARY, the file by absolute path, and SONAME.
        info = {}
        with open(os.path.join(bdir, "python", "agmm", "_libpath.py")) as f:
            exec(f.read(), info)
        pkg = os.path.join(os.path.abspath(self.build_lib), "agmm")
        lib = os.path.join(pkg, info["SONAME"])
        shutil.copyfile(info["LIBRARY"], lib)
        os.chmod(lib, 0o755)
        libpath = os.path.join(pkg, "_libpath.py")
        with open(libpath, "w") as f:
            f.write("# Written by setup.py (pip install): the library is in "
                    "the package.\nLIBRARY = %r\nSONAME = %r\n"
                    % (info["SONAME"], info["SONAME"]))
        print("agmm: %s -> %s" % (info["LIBRARY"], lib))
        return [lib, libpath]

    def _run(self, cmd):
        print(" ".join(shlex.quote(c) for c in cmd), flush=True)
        rc = subprocess.call(cmd)
        if rc:
            _fail("%s exited with status %d" % (cmd[0] + " " + cmd[1], rc))


class BinaryDistribution(Distribution):
    """A compiled library inside: platform-specific (the wheel is not
    purelib, the files go to platlib), though no Python extension."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    """Tagged py3-none-<platform>: ctypes, no Python ABI."""

    def get_tag(self):
        plat = super().get_tag()[2]
        return "py3", "none", plat


setup(
    distclass=BinaryDistribution,
    cmdclass={"build": Build, "build_py": BuildPyWithLibrary,
              "bdist_wheel": BdistWheel},
    options={"egg_info": {"egg_base": BUILD_BASE}},
)
