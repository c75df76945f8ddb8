"""The Meta-World reference: the `metaworld` package in its own venv, over a JSON-lines pipe."""
