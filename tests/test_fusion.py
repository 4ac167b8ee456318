from omnimem.fusion import union_merge


def test_dense_order_kept_and_bm25_only_hits_appended():
    assert union_merge([3, 1, 2], [2, 5, 1, 4]) == [3, 1, 2, 5, 4]


def test_empty_sides():
    assert union_merge([], [1, 2]) == [1, 2]
    assert union_merge([1, 2], []) == [1, 2]
    assert union_merge([], []) == []


def test_duplicates_within_one_side_collapse():
    assert union_merge([1, 1, 2], [2, 2, 3]) == [1, 2, 3]


def test_rrf_rewards_agreement_and_interleaves_bm25_hits():
    from omnimem.fusion import rrf_merge

    # 'b' is second in both lists: 2/(60+2) beats 'a' (1/61) and 'x' (1/61)
    assert rrf_merge(["a", "b", "c"], ["x", "b", "y"])[0] == "b"
    # equal scores keep the dense order first, then BM25's
    assert rrf_merge(["a", "c"], ["x", "y"]) == ["a", "x", "c", "y"]
    assert rrf_merge([], []) == [] and rrf_merge(["a", "a"], []) == ["a"]


def test_diversify_lets_a_second_group_into_the_top():
    from omnimem.fusion import diversify

    items = [("a", 1), ("a", 2), ("a", 3), ("b", 4), ("a", 5), ("b", 6)]
    assert diversify(items, lambda x: x[0], penalty=0) == items
    assert diversify(items, lambda x: x[0], penalty=10.0)[:2] == [("a", 1), ("b", 4)]
    moderate = diversify(items, lambda x: x[0], penalty=1.0)
    assert sorted(moderate) == sorted(items) and moderate.index(("b", 4)) < items.index(("b", 4))
