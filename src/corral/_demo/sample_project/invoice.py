"""Invoice totals: subtotal, discount, tax."""


def subtotal(lines: list[tuple[str, int, float]]) -> float:
    """Sum of quantity times unit price over all lines."""
    return sum(quantity * price for _name, quantity, price in lines)


def total(lines: list[tuple[str, int, float]], *, discount: float = 0.0, tax_rate: float = 0.0) -> float:
    """The amount due: the discount comes off the subtotal, then tax is added."""
    net = subtotal(lines) - discount
    return round(net + subtotal(lines) * tax_rate, 2)
