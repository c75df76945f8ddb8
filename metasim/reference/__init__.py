"""The benchmark kit's shared layer (issue 32): what every benchmark's checks against its
reference simulator use. For now the image measures (`metasim.reference.images`); the
reference venv and worker (`metasim.sim.refvenv`, `refwire`) move here next."""
