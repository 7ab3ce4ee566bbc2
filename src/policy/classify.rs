//! Shell command classification (DESIGN §5.2).
