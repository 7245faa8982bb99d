"""Fill-in-the-middle: the suffix after the cursor lexed (every way it can be), the grammar's
right quotient by it, the boundary where the middle meets the suffix, and the constraints that
use them (basic and contextual lexer modes)."""
