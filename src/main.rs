//! `ground-link`: the command-line face of the core library (DESIGN §9).

fn main() {
    ground_link::supervisor::run_if_supervisor();
}
