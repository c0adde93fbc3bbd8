-- DuckDB reference of the dbt models (models/, macros/) from the reference's bronze tables
-- (<kind>__bronze, see ingest.sql, behind views <kind>__stg rendered from models/staging/) and the registry's arms (table `arms`), up to run_day,
-- computed in full (the pipeline's incremental runs must come to the same rows). Rendered by
-- bench/reference/driver.py from registry/metrics.yml and dbt_project.yml's vars, as the dbt
-- macros render the models: `metrics` (registry entries with their defaults), `vars`,
-- `segment_columns`, `combinations`. Creates `sufficient_stats` (experiment_sufficient_stats)
-- and `binned` (int_quantile_values_binned_to_client_days, for the bin-edge comparison).

create or replace temp table scheduled as
select
    experiment_id, start_date, end_date,
    start_date - {{ vars.cuped_pre_period_days }} as pre_period_start_date,
    start_date - 1 as pre_period_end_date,
    unnest(generate_series(start_date, least(coalesce(end_date, {{ run_day }}), {{ run_day }}), interval 1 day))::date as as_of_date
from (select experiment_id, min(start_date) as start_date, max(end_date) as end_date from arms group by all)
where start_date <= {{ run_day }};

-- int_metric_sums_aggregated_to_client_days: one scan per source computes all its metrics
create or replace temp table metric_sums as
{%- for source in sums_sources %}
select client_id, event_date, assignments, platform, network_type,
       unnest([{% for m in sums_metrics[source] %}'{{ m.name }}'{{ ', ' if not loop.last }}{% endfor %}]) as metric,
       unnest([{% for m in sums_metrics[source] %}{{ m.name }}__n{{ ', ' if not loop.last }}{% endfor %}]) as numerator,
       unnest([{% for m in sums_metrics[source] %}{{ m.name }}__d{{ ', ' if not loop.last }}{% endfor %}]) as denominator,
       unnest([{% for m in sums_metrics[source] %}{{ m.name }}__e{{ ', ' if not loop.last }}{% endfor %}]) as n_events
from (
    select
        client_id, event_date,
        list_sort(map_entries(experiments)) as assignments,
        min(platform) as platform,
        min(network_type) as network_type
        {%- for m in sums_metrics[source] %},
        sum(case when {{ m.filter }} then cast({{ m.numerator }} as double) end) as {{ m.name }}__n,
        sum(case when {{ m.filter }} then cast({{ m.denominator or 'null' }} as double) end) as {{ m.name }}__d,
        count(*) filter ({{ m.filter }}) as {{ m.name }}__e
        {%- endfor %}
    from {{ source }}__stg
    where event_date <= {{ run_day }}
    group by client_id, event_date, list_sort(map_entries(experiments))
)
{%- if not loop.last %}
union all
{%- endif %}
{%- endfor %};

delete from metric_sums where n_events = 0;
update metric_sums set numerator = coalesce(numerator, 0.0);

-- int_quantile_values_binned_to_client_days
create or replace temp table binned as
select client_id, event_date, assignments, metric, value_bin, count(*) as n_events
from (
{%- for m in binned_metrics %}
    select client_id, event_date, list_sort(map_entries(experiments)) as assignments, '{{ m.name }}' as metric,
           case when ({{ m.value }}) > 0
                then cast(floor(ln({{ m.value }}) / ln(1.0 + {{ vars.quantile_bin_width }})) as int)
                else {{ zero_bin }} end as value_bin
    from {{ m.source }}__stg
    where event_date <= {{ run_day }} and ({{ m.filter }}) and ({{ m.value }}) is not null
    {%- if not loop.last %}
    union all
    {%- endif %}
{%- endfor %}
)
group by all;

-- int_client_networks_aggregated_to_days
create or replace temp table networks as
select client_id, event_date,
       min(min_rtt_ms) as min_rtt_ms, sum(packets_lost) as packets_lost, sum(packets_sent) as packets_sent,
       quantile_cont(delivery_rate_kbps, 0.5) as median_delivery_rate_kbps
from connections__stg
where event_date <= {{ run_day }}
group by all;

-- int_experiment_units_segmented_to_dates
create or replace temp table units as
with enrolled_days as (
    select a.key as experiment_id, a.value as arm, client_id, event_date,
           min(platform) as platform, min(network_type) as network_type
    from (select *, unnest(assignments) as a from metric_sums)
    group by all
),
unit_rows as (
    select e.experiment_id, d.arm, d.client_id, e.as_of_date, min(e.start_date) as start_date,
           min(d.platform) as platform, min(d.network_type) as network_type
    from enrolled_days d
    join scheduled e on d.experiment_id = e.experiment_id and d.event_date between e.start_date and e.as_of_date
    group by all
),
first_networks as (
    select u.experiment_id, u.arm, u.client_id, u.as_of_date,
           arg_min({'rtt_ms': n.min_rtt_ms, 'loss_rate': n.packets_lost / nullif(n.packets_sent, 0),
                    'bandwidth_kbps': n.median_delivery_rate_kbps}, n.event_date) as network
    from unit_rows u
    join networks n on u.client_id = n.client_id and n.event_date between u.start_date and u.as_of_date
    group by all
)
select u.experiment_id, u.arm, u.client_id, u.as_of_date,
       coalesce(u.platform, 'unknown') as platform,
       coalesce(u.network_type, 'unknown') as network_type,
       {{ bucket('f.network.rtt_ms', 'rtt_bucket') }} as rtt_bucket,
       {{ bucket('f.network.loss_rate', 'loss_bucket') }} as loss_bucket,
       {{ bucket('f.network.bandwidth_kbps', 'bandwidth_bucket') }} as bandwidth_bucket
from unit_rows u
left join first_networks f using (experiment_id, arm, client_id, as_of_date);

create or replace temp table segmented_units as
select experiment_id, arm, client_id, as_of_date, s.segment_type, s.segment_value
from (select *, unnest({{ segments('units') }}) as s from units);

-- int_experiment_unit_metrics_aggregated_to_dates
create or replace temp table unit_metrics as
with to_date as (
    select e.experiment_id, m.a.value as arm, m.client_id, e.as_of_date, m.metric,
           sum(m.numerator) as numerator, sum(m.denominator) as denominator, sum(m.n_events) as n_events
    from (select *, unnest(assignments) as a from metric_sums) m
    join scheduled e on m.a.key = e.experiment_id and m.event_date between e.start_date and e.as_of_date
    group by all
),
pre_period as (
    select p.experiment_id, m.client_id, m.metric,
           sum(m.numerator) as numerator, sum(m.denominator) as denominator, sum(m.n_events) as n_events
    from metric_sums m
    join (select distinct experiment_id, pre_period_start_date, pre_period_end_date from scheduled) p
      on m.event_date between p.pre_period_start_date and p.pre_period_end_date
    group by all
)
select t.*,
       coalesce(p.numerator, 0.0) as pre_numerator,
       coalesce(p.denominator, 0.0) as pre_denominator,
       coalesce(p.n_events, 0) as pre_n_events
from to_date t
left join pre_period p using (experiment_id, client_id, metric);

create or replace temp table registry as
select * from (values
{%- for m in metrics %}
    ('{{ m.name }}', '{{ m.kind }}', {{ 'true' if m.guardrail else 'false' }}){{ ',' if not loop.last }}
{%- endfor %}
) as registry (metric, metric_kind, is_guardrail);

create or replace temp table targets as
select * from (values
{%- for m in quantile_metrics %}{% set outer = loop %}{% for p in m.quantiles %}
    ('{{ m.name }}', cast({{ p }} as double), '{{ m.histogram_of or m.name }}'){{ ',' if not (loop.last and outer.last) }}
{%- endfor %}{% endfor %}
) as targets (metric, quantile_p, histogram_metric);

-- experiment_sufficient_stats, moments of the mean / proportion / ratio metrics
create or replace temp table moments as
with unit_values as (
    select u.*, m.metric, r.metric_kind, m.n_events, m.pre_n_events,
           {{ unit_value('r.metric_kind', 'm.numerator', 'm.denominator', 'm.n_events') }} as y,
           case when r.metric_kind = 'ratio' then m.denominator end as x,
           {{ unit_value('r.metric_kind', 'm.pre_numerator', 'm.pre_denominator', 'm.pre_n_events') }} as c,
           case when r.metric_kind = 'ratio' then m.pre_denominator end as d
    from unit_metrics m
    join units u using (experiment_id, arm, client_id, as_of_date)
    join registry r using (metric)
),
segmented as (
    select *, unnest({{ segments('unit_values') }}) as s from unit_values
)
select experiment_id, metric, s.segment_type, s.segment_value, arm, as_of_date,
       count(*) as n_units,
       sum(y) as sum_y, sum(y * y) as sum_y2, sum(x) as sum_x, sum(x * x) as sum_x2, sum(x * y) as sum_xy,
       sum(pre_n_events) > 0 as has_pre_period,
       sum(c) as sum_c, sum(c * c) as sum_c2, sum(y * c) as sum_yc, sum(d) as sum_d, sum(d * d) as sum_d2,
       sum(c * d) as sum_cd, sum(y * d) as sum_yd, sum(x * c) as sum_xc, sum(x * d) as sum_xd,
       cast(sum(n_events) as double) as n_events
from segmented
where {{ segment_filter('metric', 's.segment_type') }}
group by all;

-- int_quantile_statistics_aggregated_to_arms
create or replace temp table unit_bins as
select e.experiment_id, b.a.value as arm, b.client_id, e.as_of_date, b.metric, b.value_bin,
       sum(b.n_events) as n_events
from (select *, unnest(assignments) as a from binned) b
join scheduled e on b.a.key = e.experiment_id and b.event_date between e.start_date and e.as_of_date
group by all;

create or replace temp table segmented_bins as
select su.experiment_id, su.arm, su.as_of_date, su.segment_type, su.segment_value, ub.metric, ub.value_bin,
       sum(ub.n_events) as n_events
from unit_bins ub
join segmented_units su using (experiment_id, arm, client_id, as_of_date)
group by all;

create or replace temp table quantiles as
with cumulative as (
    select *,
           sum(n_events) over (partition by experiment_id, arm, as_of_date, segment_type, segment_value, metric
                               order by value_bin rows between unbounded preceding and current row) as cumulative_events,
           sum(n_events) over (partition by experiment_id, arm, as_of_date, segment_type, segment_value, metric) as total_events
    from segmented_bins
),
groups as (
    select distinct experiment_id, arm, as_of_date, segment_type, segment_value, metric, total_events from cumulative
),
ranks as (
    select g.experiment_id, g.arm, g.as_of_date, g.segment_type, g.segment_value,
           g.metric as histogram_metric, t.metric, t.quantile_p, g.total_events, c.coefficient, grid_p,
           least(greatest(cast(ceil(g.total_events * grid_p) as bigint), 1), g.total_events) as event_rank
    from groups g
    join targets t on g.metric = t.histogram_metric and {{ segment_filter('t.metric', 'g.segment_type') }}
    cross join (select unnest([{{ vars.quantile_grid_coefficients | join(', ') }}]) as coefficient) c,
    lateral (select t.quantile_p + c.coefficient * sqrt(t.quantile_p * (1 - t.quantile_p) / g.total_events) as grid_p)
    where grid_p > 0 and grid_p < 1
),
grid as (
    -- the bin holding rank r: the first with cumulative_events >= r
    select r.*, c.value_bin
    from ranks r
    asof join cumulative c
      on r.experiment_id = c.experiment_id and r.arm = c.arm and r.as_of_date = c.as_of_date
     and r.segment_type = c.segment_type and r.segment_value = c.segment_value
     and r.histogram_metric = c.metric and r.event_rank <= c.cumulative_events
)
select experiment_id, arm, as_of_date, segment_type, segment_value, metric, quantile_p,
       max(total_events) as n_events,
       max(case when coefficient = 0 then value_bin end) as quantile_bin,
       {{ bin_value('max(case when coefficient = 0 then value_bin end)') }} as quantile_value,
       list({{ bin_value('value_bin') }} order by grid_p, {{ bin_value('value_bin') }}) as grid_value,
       list(grid_p order by grid_p, {{ bin_value('value_bin') }}) as grid_p
from grid
group by all;

create or replace temp table quantile_statistics as
with unit_histograms as (
    select experiment_id, arm, client_id, as_of_date, metric, sum(n_events) as n_events,
           list({'value_bin': value_bin, 'n_events': n_events}) as bins
    from unit_bins
    group by all
),
unit_counts as (
    select q.experiment_id, q.arm, q.as_of_date, q.segment_type, q.segment_value, q.metric, q.quantile_p,
           cast(h.n_events as double) as n_i,
           cast(coalesce(list_sum(list_transform(h.bins, lambda b: case when b.value_bin <= q.quantile_bin then b.n_events else 0 end)), 0) as double) as s_i
    from quantiles q
    join targets t on q.metric = t.metric and q.quantile_p = t.quantile_p
    join segmented_units su
      on q.experiment_id = su.experiment_id and q.arm = su.arm and q.as_of_date = su.as_of_date
     and q.segment_type = su.segment_type and q.segment_value = su.segment_value
    join unit_histograms h
      on su.experiment_id = h.experiment_id and su.arm = h.arm and su.client_id = h.client_id
     and su.as_of_date = h.as_of_date and t.histogram_metric = h.metric
),
unit_sums as (
    select experiment_id, arm, as_of_date, segment_type, segment_value, metric, quantile_p,
           count(*) as n_units, sum(s_i) as sum_s, sum(s_i * s_i) as sum_s2, sum(n_i) as sum_n,
           sum(n_i * n_i) as sum_n2, sum(s_i * n_i) as sum_sn
    from unit_counts
    group by all
)
select q.experiment_id, q.metric, q.segment_type, q.segment_value, q.arm, q.as_of_date, s.n_units,
       q.quantile_p, q.quantile_value, cast(q.n_events as double) as n_events,
       s.sum_s, s.sum_s2, s.sum_n, s.sum_n2, s.sum_sn, q.grid_p, q.grid_value
from quantiles q
join unit_sums s using (experiment_id, arm, as_of_date, segment_type, segment_value, metric, quantile_p);

create or replace temp table sufficient_stats as
with statistics as (
    select experiment_id, metric, segment_type, segment_value, arm, as_of_date, n_units,
           sum_y, sum_y2, sum_x, sum_x2, sum_xy,
           {%- for column in pre_columns %}
           case when has_pre_period then {{ column }} end as {{ column }},
           {%- endfor %}
           null::double as quantile_p, null::double as quantile_value, n_events,
           null::double as sum_s, null::double as sum_s2, null::double as sum_n, null::double as sum_n2,
           null::double as sum_sn, null::double[] as grid_p, null::double[] as grid_value
    from moments
    union all by name
    select * from quantile_statistics
)
select s.experiment_id, s.metric, r.metric_kind, r.is_guardrail, s.segment_type, s.segment_value, s.arm,
       a.is_control, s.as_of_date, s.n_units,
       {%- for column in stat_columns %}
       s.{{ column }},
       {%- endfor %}
       s.quantile_p, s.quantile_value, s.n_events, s.sum_s, s.sum_s2, s.sum_n, s.sum_n2, s.sum_sn,
       s.grid_p, s.grid_value
from statistics s
join arms a on s.experiment_id = a.experiment_id and s.arm = a.arm
join registry r on s.metric = r.metric;
