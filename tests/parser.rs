//! Suite: parser.
