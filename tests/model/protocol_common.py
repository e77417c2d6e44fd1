"""What the parts of the protocol model share: the planted bugs, the
constants of the state's encoding, and the exception a failed check
raises (protocol_rules.py says how a state is laid out)."""

PLANTS = {
    "ack-before-join": "the end-of-round ack is sent while workers still run",
    "destroy-no-wait": "old teardown: destroy does not wait for the peers' "
                       "last acks; MPI window ids reused lowest-free; a "
                       "control message for an unknown window aborts",
    "no-ack-wait": "puts do not wait for the destination's ack",
    "quiet-no-wait": "the emulated link's quiet returns at once",
    "rs-reduce-no-wait": "gemm-rs: the owner reduces a tile without waiting "
                         "for the peers' cells",
    "ar-copy-no-wait": "gemm-ar: a peer copies an owner's reduced tile into "
                       "its C without waiting for the tile's cell",
    "signal-before-data": "shm put_signal raises the signal before the copy",
    "rows-no-ack-wait": "a rank raises its rows cell on a peer without "
                        "waiting for that peer's ack of the previous round",
    "absent-no-wait": "MPI: a round with fewer rows ends without waiting "
                      "for the empty tiles of its declared receives",
    "ar-absent-no-put": "gemm-ar, MPI: an owner with fewer rows this round "
                        "does not put its reduced tiles beyond them (empty)",
    "forward-no-ready-wait": "relay: a relay forwards a tile to a same-host "
                             "peer without waiting for its ready cell",
    "begin-no-forward-wait": "relay: a relay's round start posts its "
                             "receives and acks without waiting for its "
                             "pending forwards",
}
# The deliveries where a plant changes anything (the self-test looks there).
PLANT_WHERE = {
    "ack-before-join": ("shm", "link"),  # MPI acks at the next round's start
    "destroy-no-wait": ("mpi", "mixed"),  # shm/link acks delivered by then
    # harmless on MPI (design.md), caught again between same-host peers of
    # a mixed world, where the ack is what keeps the rows
    "no-ack-wait": ("shm", "link", "mpi", "mixed"),
    "quiet-no-wait": ("link",),  # shm copies at once; MPI: not modelled
    "rs-reduce-no-wait": ("shm", "link", "mpi", "mixed"),
    "ar-copy-no-wait": ("shm", "link", "mpi", "mixed"),
    "signal-before-data": ("shm",),  # shm_put_signal only
    "rows-no-ack-wait": ("shm", "link", "mpi"),
    "absent-no-wait": ("mpi",),  # only posted receives are declared
    "ar-absent-no-put": ("mpi",),
    "forward-no-ready-wait": ("mixed",),  # relay configurations only
    "begin-no-forward-wait": ("mixed",),
}
# Plants in steps only the relay configurations take.
RELAY_PLANTS = {"forward-no-ready-wait", "begin-no-forward-wait"}
# Plants in steps only the rows= configurations take.
ROWS_PLANTS = {"rows-no-ack-wait", "absent-no-wait", "ar-absent-no-put"}
GUARDS = {"join", "pass", "dwait", "quiet", "absent", "fwait"}
# A rows cell holds ROWS_BASE * e + (tiles of its source in round e): the
# epoch high, the count low, as agmm_rows_signal (counts here are < 16).
ROWS_BASE = 16
PLAN_NAME = "AB"


class Violation(Exception):
    def __init__(self, msg, label=None):
        super().__init__(msg)
        self.msg, self.label = msg, label
