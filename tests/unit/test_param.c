/* The parameter table (src/common/param.h): every row named once, with a
 * doc and a reader; the typed accessors keep the parsing the readers had
 * before the table (a BOOL switched only by exactly the other of "0" /
 * "1", INT as atol, the whole-number parsers refusing empty and trailing
 * text); `agmm --help-env`'s printout has one line per row. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/param.h"

static void rows(void)
{
    for (int i = 0; i < AGMM_PARAM_COUNT; i++) {
        const agmm_param_t *p = agmm_param((agmm_param_id_t)i);
        CHECK(p->name && *p->name && p->doc && *p->doc && p->dflt,
              "row %d is whole", i);
        CHECK(p->flags &
                  (AGMM_PARAM_BY_LIB | AGMM_PARAM_BY_CLI | AGMM_PARAM_BY_PY),
              "%s: someone reads it", p->name);
        if (p->type == AGMM_PARAM_TYPE_BOOL)
            CHECK(!strcmp(p->dflt, "0") || !strcmp(p->dflt, "1"),
                  "%s: a switch's default is 0 or 1", p->name);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(p->name, agmm_param((agmm_param_id_t)j)->name),
                  "%s: named twice", p->name);
    }
}

static void bools(void)
{
    agmm_param_id_t on = AGMM_PARAM_HUGEPAGES;     /* default 1 */
    agmm_param_id_t off = AGMM_PARAM_MPI_COUNTERS; /* default 0 */
    unsetenv("AGMM_HUGEPAGES");
    unsetenv("AGMM_MPI_COUNTERS");
    CHECK(agmm_param_bool(on) == 1 && agmm_param_bool(off) == 0, "unset");
    CHECK(!agmm_param_is_set(on), "unset is not set");
    setenv("AGMM_HUGEPAGES", "0", 1);
    setenv("AGMM_MPI_COUNTERS", "1", 1);
    CHECK(agmm_param_bool(on) == 0 && agmm_param_bool(off) == 1, "switched");
    const char *other[] = {"", "no", "00", "true", "yes", "2"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        setenv("AGMM_HUGEPAGES", other[i], 1);
        setenv("AGMM_MPI_COUNTERS", other[i], 1);
        CHECK(agmm_param_bool(on) == 1 && agmm_param_bool(off) == 0,
              "'%s' keeps the defaults", other[i]);
        CHECK(agmm_param_is_set(on), "'%s' is set", other[i]);
    }
    unsetenv("AGMM_HUGEPAGES");
    unsetenv("AGMM_MPI_COUNTERS");
}

static void numbers(void)
{
    agmm_param_id_t id = AGMM_PARAM_EXT_MASTER_PORT;
    long v = -7;
    unsetenv("MASTER_PORT");
    CHECK(agmm_param_int(id) == 0, "int: unset is 0");
    CHECK(agmm_param_long(id, &v) == 0 && v == -7, "long: unset");
    setenv("MASTER_PORT", "12abc", 1);
    CHECK(agmm_param_int(id) == 12, "int: atol's leading number");
    CHECK(agmm_param_long(id, &v) == -1 && v == -7, "long: trailing text");
    setenv("MASTER_PORT", "", 1);
    CHECK(agmm_param_long(id, &v) == -1, "long: empty");
    setenv("MASTER_PORT", " 29500", 1);
    CHECK(agmm_param_long(id, &v) == 1 && v == 29500, "long: 29500");
    setenv("MASTER_PORT", "99999999999999999999999", 1);
    CHECK(agmm_param_long(id, &v) == 1 && v == LONG_MAX,
          "long: out of range is LONG_MAX");
    unsetenv("MASTER_PORT");

    double d = -1;
    setenv("AGMM_TIMEOUT_S", "2.5", 1);
    CHECK(agmm_param_double(AGMM_PARAM_TIMEOUT_S, &d) == 1 && d == 2.5,
          "double: 2.5");
    setenv("AGMM_TIMEOUT_S", "2.5s", 1);
    CHECK(agmm_param_double(AGMM_PARAM_TIMEOUT_S, &d) == -1 && d == 2.5,
          "double: trailing text");
    unsetenv("AGMM_TIMEOUT_S");
    CHECK(agmm_param_double(AGMM_PARAM_TIMEOUT_S, &d) == 0, "double: unset");

    CHECK(agmm_param_default_int(AGMM_PARAM_EXT_OMPI_KEEPALIVE_TIME) == 300,
          "a row's default");
    CHECK(agmm_param_default_int(AGMM_PARAM_RANK) == 0, "no default: 0");
}

static void printout(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    agmm_param_print(f);
    fclose(f);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    CHECK(lines == AGMM_PARAM_COUNT + 1, "a header and a line per row: %d",
          lines);
    for (int i = 0; i < AGMM_PARAM_COUNT; i++) {
        char want[80];
        snprintf(want, sizeof want, "\n%s ",
                 agmm_param((agmm_param_id_t)i)->name);
        CHECK(strstr(buf, want), "%s printed", want + 1);
    }
    free(buf);
}

int main(void)
{
    rows();
    bools();
    numbers();
    printout();
    CHECK_DONE("param");
}
