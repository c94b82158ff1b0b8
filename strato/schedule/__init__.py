"""Schedules: primitives on (stage, loop) handles, recorded as a replayable trace."""
