/* Output files that appear complete or not at all. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "trace/trace.h"

agmm_status_t agmm_outfile_open(agmm_outfile_t *o, const char *path)
{
    o->f = NULL;
    o->path = path;
    int len = snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", path);
    if (len < 0 || (size_t)len >= sizeof o->tmp)
        return agmm_error(AGMM_ERR_INVALID_ARG, "trace: path too long: %s",
                          path);
    int fd = mkstemp(o->tmp);
    if (fd < 0)
        return agmm_error(AGMM_ERR_SYSTEM, "trace: cannot create %s: %s", path,
                          strerror(errno));
    /* mkstemp makes 0600; an output file is as readable as any other. */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        return agmm_error(AGMM_ERR_SYSTEM, "trace: cannot write %s: %s", path,
                          strerror(e));
    }
    return AGMM_OK;
}

agmm_status_t agmm_outfile_commit(agmm_outfile_t *o)
{
    int bad = ferror(o->f) != 0;
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) == 0) return AGMM_OK;
    if (!bad) e = errno;
    unlink(o->tmp);
    return agmm_error(AGMM_ERR_SYSTEM, "trace: writing %s failed: %s", o->path,
                      strerror(e));
}
