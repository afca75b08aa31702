-- Migration 17: aggregates that read the same bits on every read (docs/reference/store.md "Macros").
--
-- DuckDB's avg, sum and stddev_samp over DOUBLE add in the order its threads happen to finish: the same store read
-- twice gave two last-bit different G scores at 280k outcomes, and six distinct table3s in ten reads. Sorting the
-- values and aggregating the sorted list in one pass fixes the order (fsum / kahan_sum were not stable at DuckDB
-- 1.2.0 either). Every view aggregates floating-point values through these; counts stay integer sums.

-- The mean of x over the group (NULLs left out; NULL when none).
CREATE OR REPLACE MACRO mean_of(x) AS list_aggregate(list_sort(list(x)), 'avg');

-- The sum of x over the group (NULLs left out; NULL when none).
CREATE OR REPLACE MACRO sum_of(x) AS list_aggregate(list_sort(list(x)), 'sum');

-- The sample standard deviation of x over the group (NULL below two values).
CREATE OR REPLACE MACRO std_of(x) AS list_aggregate(list_sort(list(x)), 'stddev_samp');

-- s_T, as migration 14 defined it, through mean_of's order.
CREATE OR REPLACE MACRO suite_score(rate, excluded) AS
    list_aggregate(list_sort(list(rate) FILTER (WHERE NOT excluded AND rate IS NOT NULL)), 'avg');
