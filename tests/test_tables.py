"""tables: numbers and gaps as a lesson prints them."""

from iolab import tables


def test_tables_format_numbers_and_gaps():
    table = tables.markdown(["a", "b"], [[1.23456, None], [12345.6, float("nan")]]).data
    assert "| 1.23 | – |" in table and "| 12,346 | – |" in table
