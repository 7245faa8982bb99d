"""Token budgets: upper bounds on the tokens a state still needs (cost tables), the step's
tokens grouped by where they lead, concrete shortest completions, the walked verifier, and the
budget constraints of the contextual lexer mode."""
