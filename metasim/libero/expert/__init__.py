"""LIBERO's scripted expert: the `libero_expert` policy kind (`policy`), its grasp and
place plan from the task's goal (`plan`) and the gripper clearance it checks (`clearance`)."""
