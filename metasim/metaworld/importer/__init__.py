"""Meta-World's tasks as metasim scenes: paths to the package's files, the Sawyer as a
mocap-driven robot, the task's world as a fixture, and the `metaworld:` task source."""
