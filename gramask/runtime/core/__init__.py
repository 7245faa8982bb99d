"""The prefix runtime every constraint is built on: the Earley automaton and its parse states,
the lexer walk, the contextual lexer, the mask builder that combines table rows per step, and
:class:`Constraint`."""
