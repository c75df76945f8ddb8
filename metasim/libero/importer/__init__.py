"""LIBERO's importer: a LIBERO task (BDDL problem, asset models, robot, init states) ->
a typed metasim `Scene`, and the `libero:` task source."""
