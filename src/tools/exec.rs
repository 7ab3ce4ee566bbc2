//! `exec_cmd`: `sh -c` in the sandbox root under a per-call supervisor.
