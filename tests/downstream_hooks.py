"""The runtime side of the example downstream project (tests/downstream/)."""

calls: list[str] = []


def mark(label: str) -> None:
    calls.append(label)
