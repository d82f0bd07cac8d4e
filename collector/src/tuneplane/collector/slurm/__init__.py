"""A Slurm job's collector: one per node of the job, run by the job script (``slurm-node``).

It holds its credentials in memory only, in a process no other process of the job's user
may read (``secrecy``), gets them from control with the job's one-time ticket
(``control``) and renews them while the job runs (``credentials``), and reads the sources
of the node's members into their spools until the job ends (``node``).
"""
