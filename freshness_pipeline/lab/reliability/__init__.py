"""Operating tools: the chaos campaign and the soak, and the report sections they write."""
