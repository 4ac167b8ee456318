from omnimem.fusion import union_merge


def test_dense_order_kept_and_bm25_only_hits_appended():
    assert union_merge([3, 1, 2], [2, 5, 1, 4]) == [3, 1, 2, 5, 4]


def test_empty_sides():
    assert union_merge([], [1, 2]) == [1, 2]
    assert union_merge([1, 2], []) == [1, 2]
    assert union_merge([], []) == []


def test_duplicates_within_one_side_collapse():
    assert union_merge([1, 1, 2], [2, 2, 3]) == [1, 2, 3]
