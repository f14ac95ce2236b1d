"""QP lookup tables of qpviz: the table files and their builder (``python -m lookup_tables.build``)."""
