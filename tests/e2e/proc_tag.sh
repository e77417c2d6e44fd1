# Sourced by the shell tests: tag every process this test starts with a
# unique environment variable, so "no process left behind" can be checked
# for our processes only (the machine may run other agmm processes).
AGMM_TEST_TAG="agmm-test-$$-$RANDOM"
export AGMM_TEST_TAG
# PIDs of live processes carrying our tag, except this shell and its
# subshells doing the looking.
tagged_pids() {
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
    grep -qxzF "AGMM_TEST_TAG=$AGMM_TEST_TAG" "/proc/$p/environ" 2>/dev/null \
      && grep -q agmm "/proc/$p/cmdline" 2>/dev/null && echo "$p"
  done
  return 0
}
