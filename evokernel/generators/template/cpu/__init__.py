"""The template generator's cpu back end: C++ candidates through ``load_cpp``. Its families (:mod:`.families`) write
one stage each; :mod:`.candidate` assembles the file, :mod:`.schedules` holds the knobs and transforms."""
