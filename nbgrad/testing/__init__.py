"""Test support shared by nbgrad's own tests: the op table (op_db) and numeric checks."""
