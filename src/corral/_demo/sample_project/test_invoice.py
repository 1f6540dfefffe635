import unittest

from invoice import subtotal, total

LINES = [("widget", 2, 10.0), ("gadget", 1, 30.0)]


class InvoiceTest(unittest.TestCase):
    def test_subtotal(self) -> None:
        self.assertEqual(subtotal(LINES), 50.0)

    def test_total_without_discount(self) -> None:
        self.assertEqual(total(LINES, tax_rate=0.2), 60.0)

    def test_tax_applies_after_discount(self) -> None:
        self.assertEqual(total(LINES, discount=10.0, tax_rate=0.2), 48.0)


if __name__ == "__main__":
    unittest.main()
