-- Indices of the opprof profile database (schema version 1), created after the rows are loaded:
-- building an index once over the finished table is faster than updating it per insert.
-- Deliberately few: the reports read the small aggregated tables, and a report that walks kernels reads
-- them all in id order. An index over a million-row table costs most of a second to build and tens of
-- MB, so kernel-level indices are left to the analyses that want them (docs/schema.md shows how).
-- Which ncu row measured a kernel (the HTML report's per-kernel counters).
CREATE INDEX ncu_rows_by_kernel ON ncu_rows(matched_kernel_id);
