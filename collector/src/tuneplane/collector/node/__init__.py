"""The node agent: enrolls a host with Node control and runs launches (training command
plus a collector beside it) on it."""
