/* The MPI world: ranks that exist as the processes of MPI_COMM_WORLD
 * (started by mpirun or any MPI launcher). Initializes MPI with
 * MPI_THREAD_MULTIPLE (or checks the level of an MPI the caller already
 * initialized), makes the one world of this process and starts the MPI
 * backend on it (transport/mpi/mpi.h). Built only with MPI; without it
 * mpi_world_stub.c answers AGMM_ERR_UNSUPPORTED. */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>

#include "common/log.h"
#include "common/util.h"
#include "transport/mpi/mpi.h"
#include "world/world.h"

/* The control table of an MPI world: the MPI backend's entries over its
 * collectives and control messages (transport/mpi/mpi.h). Read-only,
 * shared by every thread. */
static void mpi_world_destroy(agmm_world_t *w);
static const agmm_world_ops_t mpi_world_ops = {
    .name = "mpi",
    .barrier = agmm_mpi_barrier,
    .allgather = agmm_mpi_allgather,
    .abort = agmm_mpi_abort,
    .aborted = agmm_mpi_aborted,
    .dropped = agmm_mpi_dropped,
    .destroy = mpi_world_destroy,
};

/* The one MPI world of this process (MPI_COMM_WORLD). */
static agmm_world_t *the_world;

static const char *thread_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE:
        return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
        return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
        return "MPI_THREAD_SERIALIZED";
    default:
        return "MPI_THREAD_MULTIPLE";
    }
}

agmm_status_t agmm_world_create_mpi(int *argc, char ***argv, double timeout_s,
                                    agmm_world_t **out)
{
    if (!out)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "world_create_mpi: out is NULL");
    *out = NULL;
    if (the_world)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "world_create_mpi: this process already has an MPI "
                          "world");
    /* A write to a peer that died (TCP to a killed or cut host) raises
     * SIGPIPE in whichever thread wrote: MPI's, or ours in an abort message.
     * At its default it kills this rank before it can say who failed (seen
     * in net_faults.sh's kill case: "rank 0 exited on signal 13" instead of
     * the killed rank). Left at the default only by a program that did not
     * choose: then ignore it, so the write fails with EPIPE and the failure
     * is reported as the peer's. A handler or SIG_IGN set by the program is
     * kept. */
    struct sigaction pipe_sa;
    if (sigaction(SIGPIPE, NULL, &pipe_sa) == 0 &&
        pipe_sa.sa_handler == SIG_DFL && !(pipe_sa.sa_flags & SA_SIGINFO))
        signal(SIGPIPE, SIG_IGN);
    int inited = 0, finalized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized)
        return agmm_error(AGMM_ERR_BAD_STATE,
                          "world_create_mpi: MPI was already finalized");
    if (!inited) {
        int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS)
            return agmm_error(AGMM_ERR_TRANSPORT, "MPI_Init_thread failed");
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        agmm_error(AGMM_ERR_UNSUPPORTED,
                   "MPI provides only %s; agmm's MPI transport needs "
                   "MPI_THREAD_MULTIPLE (worker threads send while a progress "
                   "thread receives): use an MPI built with thread support",
                   thread_level_name(provided));
        if (!inited) MPI_Finalize();
        return AGMM_ERR_UNSUPPORTED;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    agmm_world_t *w = calloc(1, sizeof *w);
    if (!w) return agmm_error(AGMM_ERR_NO_MEMORY, "MPI: out of memory");
    w->ctl = &mpi_world_ops; /* before the backend starts: it may abort */
    w->timeout_s = timeout_s > 0 ? timeout_s : 60.0;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    agmm_log_set_rank(w->rank);
    agmm_world_threads(AGMM_WORLD_MPI);
    agmm_status_t st = agmm_mpi_backend_start(w, !inited);
    if (st != AGMM_OK && !w->impl) { /* out of memory for the state */
        free(w);
        return st;
    }
    if (st != AGMM_OK) {
        /* Without the progress thread nobody can be told: MPI_Abort. */
        MPI_Abort(MPI_COMM_WORLD, 1);
        return st;
    }
    /* Same-host ranks share windows through named segments
     * (transport/mpi/mpi_node.h), unlinked once every peer mapped them; a
     * rank killed inside a window's allocation (mpirun kills every rank
     * when one fails) leaves its segment named, with its pid. Every MPI
     * world removes such leftovers of processes that are gone, so they
     * last until the next MPI job on that host at most. */
    agmm_cleanup("mpi", NULL);
    the_world = w;
    *out = w;
    return AGMM_OK;
}

/* agmm_world_destroy of an MPI world (world.c dispatches here). */
static void mpi_world_destroy(agmm_world_t *w)
{
    if (w != the_world) return;
    agmm_mpi_backend_stop(w);
    the_world = NULL;
    free(w);
}
