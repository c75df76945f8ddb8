"""`metasim collect`: record a policy's episodes as a LeRobot dataset."""
