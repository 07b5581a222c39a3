// Placeholder until the interpreter lands.
