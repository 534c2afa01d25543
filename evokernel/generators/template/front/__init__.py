"""The template generator's front end, the same for every target: the task analysis (:mod:`.trace`,
:mod:`.normalise` into the IR of :mod:`.graph`), the lowering into a stage plan (:mod:`.lower`) and the schedule
search (:mod:`.search`). It imports no back end."""
