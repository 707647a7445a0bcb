"""The repositories of the memory database: one per table group, each holding all of its SQL."""
