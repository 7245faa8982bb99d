"""Grammar front ends: the inputs users already have (JSON Schema, regular expressions, choices,
GBNF, the llguidance/XGrammar Lark dialect), each turned into a :class:`gramask.Grammar`."""
