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


def test_extra_lists_reorder_near_ties_but_never_bury_a_clear_match_of_both_retrievers():
    from omnimem.fusion import clear_wins_kept, rrf_order

    dense = [(1, 0.48), (2, 0.22), (3, 0.20), (4, 0.06)]  # unit 1 is far the closest; BM25 found 3 alone
    sparse = [(3, 2.5)]
    plain = rrf_order([1, 2, 3, 4], [3])
    lifted = rrf_order([1, 2, 3, 4], [3], extra=[([2, 4], 1.0)])  # a signal that favours 2 and 4
    assert plain[0] == 3 and lifted.index(2) < lifted.index(1)
    kept = clear_wins_kept(lifted, plain, dense, sparse, [2, 4], margin=0.2)
    # 1 comes back above 2 (0.26 closer, BM25 no lower) and 4; 2 stays above 3, 0.02 apart (a near tie), and
    # 1 is not clearly better than 3, which has BM25's word
    assert lifted == [2, 3, 4, 1] and kept == [1, 2, 3, 4]
    assert clear_wins_kept(lifted, plain, dense, sparse, [2, 4], margin=0.3) == [2, 3, 1, 4]  # 0.42 above 4 only
    assert clear_wins_kept(plain, plain, dense, sparse, [], margin=0.2) == plain  # no signal, no change


def test_what_is_clearly_better_comes_in_order_however_deep_the_chain():
    from omnimem.fusion import clear_wins_kept

    dense = [(r, 1.0 - 0.3 * r) for r in range(5)]  # each unit 0.3 closer than the next
    worst_first = [4, 3, 2, 1, 0]
    assert clear_wins_kept(worst_first, [0, 1, 2, 3, 4], dense, [], worst_first, margin=0.25) == [0, 1, 2, 3, 4]
    # a BM25 score lower than the unit's below it: no longer clearly better, the signal's order stays
    assert clear_wins_kept([1, 0], [0, 1], dense[:2], [(1, 1.0)], [1], margin=0.25) == [1, 0]
    try:
        clear_wins_kept([1, 0], [0, 1], dense[:2], [], [1], margin=0.0)
    except ValueError:
        pass
    else:
        raise AssertionError("a margin of 0 must be refused")
