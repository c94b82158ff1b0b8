"""The schedule primitives, one a module; each is a function on a `ScheduleState` that
checks its preconditions and raises ScheduleError before the kernel is rebuilt."""
