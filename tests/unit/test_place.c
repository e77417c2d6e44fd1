/* The placement decision (src/place/place.c) on machines hwloc describes
 * (HWLOC_SYNTHETIC: 1 and 2 packages, 1-4 NUMA nodes per package, SMT on
 * and off, a cpuset hiding some CPUs), P = 1..9 ranks: every rank's CPU
 * list and memory nodes as stated here; CPU lists (--bind LIST) accepted
 * and refused with their reasons; agmm_bind_apply's affinity and memory
 * policy read back in a child. Synthetic PUs are numbered in logical
 * order, so with two threads a core the first threads are the even CPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "place/place.h"

static agmm_topo_t topo;

static int load(const char *synthetic, const char *hide)
{
    setenv("HWLOC_SYNTHETIC", synthetic, 1);
    if (agmm_topo_load(&topo) != AGMM_OK) {
        CHECK(0, "%s: hwloc refused it", synthetic);
        return -1;
    }
    CHECK(topo.described, "%s: a described machine", synthetic);
    if (hide) {
        agmm_cpuset_t h, allowed;
        char why[100];
        CHECK(agmm_cpuset_parse(hide, strlen(hide), &h, why, sizeof why) == 0,
              "hide %s: %s", hide, why);
        memset(&allowed, 0, sizeof allowed);
        for (int i = 0; i < topo.npus; i++)
            if (!agmm_cpuset_has(&h, topo.pu[i].os))
                agmm_cpuset_add(&allowed, topo.pu[i].os);
        agmm_topo_restrict(&topo, &allowed);
    }
    return 0;
}

/* "from,from+step,..." count numbers: the even CPUs of an SMT-2 range. */
static const char *stride(int from, int count, int step)
{
    static char bufs[8][400];
    static int next;
    char *b = bufs[next++ % 8];
    size_t at = 0;
    b[0] = '\0';
    for (int i = 0; i < count; i++)
        at += (size_t)snprintf(b + at, sizeof bufs[0] - at, "%s%d",
                               i ? "," : "", from + i * step);
    return b;
}

/* The plan's CPU lists joined with '|' ("" when nothing is bound). */
static void lists(const agmm_place_t *p, char *out, size_t len, int nodes)
{
    size_t at = 0;
    out[0] = '\0';
    for (int r = 0; p->bound && r < p->nranks && at < len; r++) {
        char one[600];
        agmm_cpuset_format(nodes ? &p->rank[r].nodes : &p->rank[r].cpus, one,
                           sizeof one);
        at += (size_t)snprintf(out + at, len - at, "%s%s", r ? "|" : "", one);
    }
}

static void expect(const char *machine, const char *hide, int p, int threads,
                   const char *want, const char *want_nodes)
{
    if (load(machine, hide)) return;
    agmm_place_t pl;
    char why[300] = "", got[4000];
    int rc = agmm_place_plan(&topo, p, "auto", threads, &pl, why, sizeof why);
    CHECK(rc == 0, "%s P=%d: %s", machine, p, why);
    if (rc) return;
    lists(&pl, got, sizeof got, 0);
    CHECK(!strcmp(got, want),
          "%s%s%s P=%d threads %d: got '%s' (%s), want '%s'", machine,
          hide ? " hiding " : "", hide ? hide : "", p, threads, got, pl.note,
          want);
    if (want_nodes) {
        lists(&pl, got, sizeof got, 1);
        CHECK(!strcmp(got, want_nodes), "%s P=%d: nodes '%s', want '%s'",
              machine, p, got, want_nodes);
    }
    CHECK(pl.bound == (want[0] != '\0'), "%s P=%d: bound %d", machine, p,
          pl.bound);
    CHECK(pl.note[0] != '\0', "%s P=%d: a note", machine, p);
    agmm_place_free(&pl);
}

static void two_packages_smt(void)
{
    const char *m = "pack:2 numa:2 core:16 pu:2"; /* 64 cores, 128 PUs */
    char w[2000];
    /* The target: 2 ranks, one package's 32 physical cores each. */
    snprintf(w, sizeof w, "%s|%s", stride(0, 32, 2), stride(64, 32, 2));
    expect(m, NULL, 2, 0, w, "0-1|2-3");
    /* 4 ranks: one node each. */
    snprintf(w, sizeof w, "%s|%s|%s|%s", stride(0, 16, 2), stride(32, 16, 2),
             stride(64, 16, 2), stride(96, 16, 2));
    expect(m, NULL, 4, 0, w, "0|1|2|3");
    expect(m, NULL, 1, 0, stride(0, 64, 2), "0-3");
    /* 3 ranks on 4 nodes: node r each, the last idle. */
    snprintf(w, sizeof w, "%s|%s|%s", stride(0, 16, 2), stride(32, 16, 2),
             stride(64, 16, 2));
    expect(m, NULL, 3, 0, w, "0|1|2");
    /* 8 ranks: two groups of 8 cores in each node. */
    size_t at = 0;
    for (int r = 0; r < 8; r++)
        at += (size_t)snprintf(w + at, sizeof w - at, "%s%s", r ? "|" : "",
                               stride(r * 16, 8, 2));
    expect(m, NULL, 8, 0, w, "0|0|1|1|2|2|3|3");
    /* The same, 16 threads a rank: 8 cores have too few, so both threads. */
    expect(m, NULL, 8, 16, "0-15|16-31|32-47|48-63|64-79|80-95|96-111|112-127",
           NULL);
    /* 5 ranks: 12 cores each over all 64; ranks 1 and 2 span two nodes. */
    snprintf(w, sizeof w, "%s|%s|%s|%s|%s", stride(0, 12, 2), stride(24, 12, 2),
             stride(48, 12, 2), stride(72, 12, 2), stride(96, 12, 2));
    expect(m, NULL, 5, 0, w, "0|0-1|1-2|2|3");
}

static void two_packages_no_smt(void)
{
    const char *m = "pack:2 numa:2 core:16 pu:1";
    expect(m, NULL, 2, 0, "0-31|32-63", "0-1|2-3");
    expect(m, NULL, 4, 0, "0-15|16-31|32-47|48-63", "0|1|2|3");
    expect(m, NULL, 8, 0, "0-7|8-15|16-23|24-31|32-39|40-47|48-55|56-63", NULL);
    expect(m, NULL, 6, 0, "0-9|10-19|20-29|30-39|40-49|50-59", NULL);
    /* One node per package. */
    expect("pack:2 numa:1 core:4 pu:2", NULL, 2, 0, "0,2,4,6|8,10,12,14",
           "0|1");
    /* Four nodes per package. */
    const char *m4 = "pack:2 numa:4 core:2 pu:1";
    expect(m4, NULL, 2, 0, "0-7|8-15", "0-3|4-7");
    expect(m4, NULL, 4, 0, "0-3|4-7|8-11|12-15", "0-1|2-3|4-5|6-7");
    expect(m4, NULL, 8, 0, "0-1|2-3|4-5|6-7|8-9|10-11|12-13|14-15",
           "0|1|2|3|4|5|6|7");
    expect(m4, NULL, 7, 0, "0-1|2-3|4-5|6-7|8-9|10-11|12-13", NULL);
}

static void one_package(void)
{
    const char *m = "pack:1 numa:1 core:8 pu:2";
    expect(m, NULL, 1, 0, "0,2,4,6,8,10,12,14", "0");
    expect(m, NULL, 2, 0, "0,2,4,6|8,10,12,14", "0|0");
    expect(m, NULL, 2, 8, "0-7|8-15", NULL); /* 8 threads on 4 cores */
    expect(m, NULL, 3, 0, "0,2|4,6|8,10", NULL);
    expect(m, NULL, 8, 0, "0|2|4|6|8|10|12|14", NULL);
    expect(m, NULL, 9, 0, "", NULL); /* more ranks than cores */
    const char *m3 = "pack:1 numa:3 core:4 pu:1";
    expect(m3, NULL, 2, 0, "0-3|4-7", "0|1");
    expect(m3, NULL, 3, 0, "0-3|4-7|8-11", "0|1|2");
    expect(m3, NULL, 6, 0, "0-1|2-3|4-5|6-7|8-9|10-11", NULL);
    expect(m3, NULL, 4, 0, "0-2|3-5|6-8|9-11", NULL); /* straddles */
    expect("pack:1 numa:2 core:2 pu:1", NULL, 5, 0, "", NULL);
}

static void hidden_cpus(void)
{
    /* 4 nodes of 4; CPUs 0, 1 and 12 not ours: nodes of 2, 4, 4 and 3. */
    const char *m = "pack:2 numa:2 core:4 pu:1";
    expect(m, "0-1,12", 4, 0, "2-3|4-7|8-11|13-15", "0|1|2|3");
    expect(m, "0-1,12", 2, 0, "2-7|8-11,13-15", "0-1|2-3");
    expect(m, "0-1,12", 8, 0, "2|3|4|5|8|9|13|14", NULL);
    /* All of node 0 hidden: 3 nodes left (OS numbers 1-3). */
    expect(m, "0-3", 3, 0, "4-7|8-11|12-15", "1|2|3");
    expect(m, "0-3", 2, 0, "4-7|8-11", "1|2");
    /* SMT siblings hidden: their cores keep the other thread. */
    expect("pack:1 numa:1 core:4 pu:2", "0,3", 2, 0, "1-2|4,6", NULL);
}

static void refuse(const char *machine, int p, const char *bind,
                   const char *want_in_why)
{
    if (load(machine, NULL)) return;
    agmm_place_t pl;
    char why[300] = "";
    int rc = agmm_place_plan(&topo, p, bind, 0, &pl, why, sizeof why);
    CHECK(rc == -1 && strstr(why, want_in_why), "'%s' P=%d: rc %d why '%s'",
          bind, p, rc, why);
    CHECK(pl.rank == NULL && !pl.bound, "'%s': nothing left", bind);
}

static void cpu_lists(void)
{
    const char *m = "pack:1 numa:2 core:4 pu:1"; /* CPUs 0-7 */
    agmm_place_t pl;
    char why[300], got[400];
    load(m, NULL);
    CHECK(agmm_place_plan(&topo, 2, "0-3|4,6", 0, &pl, why, sizeof why) == 0,
          "a good list: %s", why);
    lists(&pl, got, sizeof got, 0);
    CHECK(!strcmp(got, "0-3|4,6"), "list kept: %s", got);
    lists(&pl, got, sizeof got, 1);
    CHECK(!strcmp(got, "0|1"), "list nodes: %s", got);
    CHECK(pl.rank[1].ncores == 2, "rank 1 has 2 cores");
    char d[200];
    agmm_place_describe_rank(&pl, &topo, 0, d, sizeof d);
    CHECK(!strcmp(d, "cores 0-3 (node 0), memory on node 0"), "describe: %s",
          d);
    agmm_place_free(&pl);
    CHECK(agmm_place_plan(&topo, 2, "none", 0, &pl, why, sizeof why) == 0 &&
              !pl.bound,
          "none binds nothing");
    refuse(m, 2, "0-3", "1 CPU list for 2 ranks");
    refuse(m, 2, "0|1|2", "3 CPU lists for 2 ranks");
    refuse(m, 2, "0-3|3-5", "ranks 0 and 1 both list CPU 3");
    refuse(m, 2, "0-3|8",
           "rank 1: CPU 8 is not one this process may use "
           "(allowed: 0-7)");
    refuse(m, 2, "0-3|", "rank 1: an empty CPU list");
    refuse(m, 2, "0-3|x", "rank 1: 'x' is not a CPU list");
    refuse(m, 2, "0-3|5-4", "'5-4' is an empty range");
    refuse(m, 2, "0-3|4,", "ends with a comma");
    refuse(m, 2, "0-3|99999", "CPU numbers go up to 1023");
    refuse(m, 2, "numa", "allowed: auto, none, or one CPU list per rank");
}

#include <linux/mempolicy.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* agmm_bind_apply in a child as a 2-node machine would have it: the
 * affinity is the rank's CPU alone and the memory policy reads back as
 * MPOL_BIND to node 0 (the one node every machine has), so the syscall's
 * arguments are right; the share is recorded for the workers. */
static void bind_apply(void)
{
    cpu_set_t mine;
    CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0, "affinity");
    int cpu = -1;
    for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
        if (CPU_ISSET(i, &mine)) cpu = i;
    pid_t pid = fork();
    if (pid == 0) {
        agmm_place_rank_t r;
        memset(&r, 0, sizeof r);
        agmm_cpuset_add(&r.cpus, cpu);
        agmm_cpuset_add(&r.nodes, 0);
        r.ncores = 1;
        if (agmm_bind_apply(&r, 2) != 0) _exit(10);
        cpu_set_t now;
        if (sched_getaffinity(0, sizeof now, &now) != 0 ||
            CPU_COUNT(&now) != 1 || !CPU_ISSET(cpu, &now))
            _exit(11);
        int mode = -1;
        unsigned long mask[AGMM_CPUSET_MAX / (8 * sizeof(unsigned long))];
        memset(mask, 0, sizeof mask);
        if (syscall(SYS_get_mempolicy, &mode, mask,
                    (unsigned long)AGMM_CPUSET_MAX + 1, NULL, 0UL) != 0)
            _exit(12);
        if (mode != MPOL_BIND || mask[0] != 1ul) _exit(13);
        const agmm_cpuset_t *share = agmm_bind_rank_cpus();
        if (!share || agmm_cpuset_count(share) != 1 ||
            !agmm_cpuset_has(share, cpu))
            _exit(14);
        _exit(0);
    }
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "bind_apply child: status %d (10 apply, 11 affinity, 12 "
          "get_mempolicy, 13 policy, 14 share)",
          WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    CHECK(agmm_bind_rank_cpus() == NULL, "this process stays unbound");
}

#ifdef AGMM_HAVE_HWLOC
#include <hwloc.h>

/* HWLOC_XMLFILE: a machine written as XML (from a synthetic one) plans as
 * the synthetic one did. */
static void xml_file(void)
{
    hwloc_topology_t t;
    char path[] = "/tmp/agmm_place_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0) return;
    close(fd);
    unsetenv("HWLOC_SYNTHETIC");
    int ok =
        hwloc_topology_init(&t) == 0 &&
        hwloc_topology_set_synthetic(t, "pack:2 numa:1 core:4 pu:1") == 0 &&
        hwloc_topology_load(t) == 0 &&
        hwloc_topology_export_xml(t, path, 0) == 0;
    hwloc_topology_destroy(t);
    CHECK(ok, "XML written to %s", path);
    setenv("HWLOC_XMLFILE", path, 1);
    agmm_place_t pl;
    char why[300] = "", got[400];
    int rc = agmm_topo_load(&topo);
    CHECK(rc == AGMM_OK && topo.described && topo.nnodes == 2 &&
              topo.ncores == 8,
          "XML: loaded %d, described %d, %d nodes, %d cores", rc,
          topo.described, topo.nnodes, topo.ncores);
    if (rc == AGMM_OK &&
        agmm_place_plan(&topo, 2, "auto", 0, &pl, why, sizeof why) == 0) {
        lists(&pl, got, sizeof got, 0);
        CHECK(!strcmp(got, "0-3|4-7"), "XML 2 ranks: %s", got);
        agmm_place_free(&pl);
    }
    unsetenv("HWLOC_XMLFILE");
    unlink(path);
}
#endif

int main(void)
{
    two_packages_smt();
    two_packages_no_smt();
    one_package();
    hidden_cpus();
    cpu_lists();
    bind_apply();
#ifdef AGMM_HAVE_HWLOC
    xml_file();
#endif
    CHECK_DONE("place");
}
