/* Sanitizer builds with MPI only (cmake/sanitize.cmake links it into every
 * program of such a build): dlclose() does nothing, so the plugins OpenMPI
 * 4.1 loads with dlopen (its mca_*.so components, libpmix and the libraries
 * they pull in) stay mapped until the process exits.
 *
 * Why: OpenMPI unloads the components it does not select during
 * MPI_Init and the rest in MPI_Finalize. Memory that only an unloaded
 * component's globals pointed to then looks leaked to LeakSanitizer, and
 * its allocation stacks show '<unknown module>' frames that no suppression
 * can name (a race report in one would be as anonymous to TSan). OpenMPI
 * 4.1 has no mca_base_component_disable_dlclose parameter (5.0 has); this
 * is the same effect. Kept loaded, every frame names its library, and
 * tests/sanitizers/{lsan,tsan}.supp suppress OpenMPI's own findings by
 * library (tests/sanitizers/README.md).
 *
 * The executable's definition interposes libc's for every library loaded
 * after it (-Wl,--export-dynamic-symbol=dlclose puts it in the dynamic
 * symbol table). Nothing in agmm calls dlclose. */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
