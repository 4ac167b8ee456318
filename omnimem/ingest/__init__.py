"""Getting input into memory: validation and loaders for conversation files."""
