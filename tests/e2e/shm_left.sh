# Sourced by the shell tests that check "no /dev/shm segment left behind",
# after proc_tag.sh. The machine may run other agmm processes (other tests,
# other sessions' joined worlds) whose segments are alive and not ours, or
# may hold another test's leftovers from before this test began; only what
# this test's own runs could have left counts.
#
# Segment names are agmm:<uid>:<job>:<pid>:<tag> (src/transport/shm/
# segment.h; pid 0 for a joined world's control segment). shm_left prints
# this user's segments that are
#   - of a job this test started (SHM_JOBS, space-separated: "fork-<pid of
#     an agmm launcher we ran>", a joined job's name), whatever the pid: the
#     run is over, so any of them is a leftover;
#   - or new since this file was sourced and made by a process that is
#     gone (what `agmm cleanup` would remove), pid 0 excepted (a control
#     segment of a job not ours belongs to a live world elsewhere).
# usage: SHM_JOBS+=" fork-$launcher"; left=$(shm_left); [ -z "$left" ]
SHM_UID=$(id -u)
SHM_JOBS=""
shm_list() { # this user's agmm segments, one name a line
    local f
    for f in /dev/shm/agmm:"$SHM_UID":*; do
        [ -e "$f" ] && echo "${f#/dev/shm/}"
    done
    return 0
}
SHM_BEFORE=$(shm_list)
shm_left() {
    local f job pid
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        IFS=: read -r _ _ job pid _ <<<"$f"
        case " $SHM_JOBS " in
        *" $job "*) echo "$f"; continue ;;
        esac
        [ "$pid" = 0 ] && continue
        [ -d "/proc/$pid" ] && continue
        grep -qxF -- "$f" <<<"$SHM_BEFORE" || echo "$f"
    done <<<"$(shm_list)"
    return 0
}
