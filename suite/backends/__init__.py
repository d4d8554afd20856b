"""Built-in backends; each is imported only when a user names it."""
