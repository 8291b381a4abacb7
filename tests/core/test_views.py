"""Borrowed views (:mod:`schedgym.core.views`): the same elements as numpy's view, writable
through to the owner, and refused for arrays they do not describe."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from schedgym.core.views import borrow_block, borrow_row


@numba.njit
def _block_copy(flat: np.ndarray, start: int, n_rows: int, n_cols: int) -> np.ndarray:
    return borrow_block(flat, start, n_rows, n_cols).copy()


@numba.njit
def _fill_block(flat: np.ndarray, start: int, n_rows: int, n_cols: int) -> None:
    v = borrow_block(flat, start, n_rows, n_cols)
    for i in range(n_rows):
        for j in range(n_cols):
            v[i, j] = 100.0 * i + j


@numba.njit
def _row_sum(flat: np.ndarray, start: int, n_cols: int) -> float:
    row = borrow_block(flat, start, 1, n_cols)[0]
    return row.sum()


@pytest.mark.parametrize(("start", "n_rows", "n_cols"), [(0, 1, 1), (3, 2, 5), (7, 4, 3),
                                                          (0, 3, 6)])
def test_borrowed_block_equals_numpy_view(start: int, n_rows: int, n_cols: int) -> None:
    flat = np.arange(20, dtype=np.float64) * 1.5
    want = flat[start:start + n_rows * n_cols].reshape(n_rows, n_cols)
    got = _block_copy(flat, start, n_rows, n_cols)
    assert got.shape == want.shape and np.array_equal(got, want)
    assert _row_sum(flat, start, n_cols) == flat[start:start + n_cols].sum()


def test_borrowed_block_writes_through_to_its_owner_only_inside_the_block() -> None:
    flat = np.full(20, -1.0)
    _fill_block(flat, 5, 3, 4)
    want = np.full(20, -1.0)
    want[5:17] = (100.0 * np.arange(3)[:, None] + np.arange(4)).ravel()
    assert np.array_equal(flat, want)


def test_borrowed_block_of_other_dtypes() -> None:
    ints = np.arange(12, dtype=np.int64)
    assert np.array_equal(_block_copy(ints, 2, 2, 3), ints[2:8].reshape(2, 3))
    f32 = np.arange(12, dtype=np.float32)
    assert np.array_equal(_block_copy(f32, 1, 5, 2), f32[1:11].reshape(5, 2))


@pytest.mark.parametrize("bad", [np.zeros((3, 4)), np.zeros(20)[::2]])
def test_borrowed_block_refuses_arrays_it_does_not_describe(bad: np.ndarray) -> None:
    with pytest.raises(numba.core.errors.TypingError, match="borrow_block"):
        _block_copy(bad, 0, 1, 2)


@numba.njit
def _rows_copy(a: np.ndarray) -> np.ndarray:
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        row = borrow_row(a, a.shape[0] - 1 - i)
        for j in range(a.shape[1]):
            out[i, j] = row[j]
    return out


@numba.njit
def _scale_row(a: np.ndarray, i: int, f: float) -> None:
    row = borrow_row(a, i)
    for j in range(row.size):
        row[j] *= f


def test_borrowed_row_equals_numpy_row_and_writes_through() -> None:
    a = np.arange(15, dtype=np.float64).reshape(5, 3)
    assert np.array_equal(_rows_copy(a), a[::-1])
    f32 = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert np.array_equal(_rows_copy(f32), f32[::-1])
    b = a.copy()
    _scale_row(b, 3, 2.0)
    want = a.copy()
    want[3] *= 2.0
    assert np.array_equal(b, want)


@numba.njit
def _first_row(a: np.ndarray) -> np.ndarray:
    return borrow_row(a, 0).copy()


@pytest.mark.parametrize("bad", [np.zeros(6), np.zeros((4, 6))[:, ::2], np.zeros((2, 2, 2))])
def test_borrowed_row_refuses_arrays_it_does_not_describe(bad: np.ndarray) -> None:
    assert np.array_equal(_first_row(np.ones((2, 3))), np.ones(3))
    with pytest.raises(numba.core.errors.TypingError, match="borrow_row"):
        _first_row(bad)
