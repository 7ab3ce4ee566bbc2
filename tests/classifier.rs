//! Suite: classifier.
