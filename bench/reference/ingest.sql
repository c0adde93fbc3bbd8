-- DuckDB reference of jobs/ingest for one event kind (docs/ingestion.md): every landing row of
-- the upload days given is typed and validated (first failing rule wins, the same eight reasons),
-- then classified loaded / quarantined / duplicate by the dedup rule, and counted per file.
-- Rendered by bench/reference/driver.py (Jinja): `kind`, `fields` (name, type, nullable),
-- `json_sources` / `parquet_sources` (per upload day: files, and for Parquet the projection of
-- one footer-schema group), `lookback_days`, `future_tolerance_minutes`, `event_type`,
-- `schema_version`. Creates the tables {{ kind }}__classified and {{ kind }}__bronze.

create or replace temp table {{ kind }}__parsed as
{%- set paths = [] %}{% for f in fields %}{% do paths.append("'$." ~ f.name ~ "'") %}{% endfor %}
{%- for src in json_sources %}
select
    date '{{ src.day }}' as upload_date,
    source_file,
    {%- for f in fields %}
    {{ f.name }},
    {%- endfor %}
    coalesce(
        case when v is null then 'malformed_json' end,
        case when json_type(v) <> 'OBJECT' then 'not_an_object' end
        {%- for f in fields %},
        {%- if not f.nullable %}
        case when t[{{ loop.index }}] is null or t[{{ loop.index }}] = 'NULL' then 'missing_field:{{ f.name }}' end,
        {%- endif %}
        case when t[{{ loop.index }}] is not null and t[{{ loop.index }}] <> 'NULL' and {{ f.name }} is null
             then 'wrong_type:{{ f.name }}' end
        {%- endfor %}
    ) as reason
from (
    select
        source_file,
        v,
        t,
        {%- for f in fields %}
        {{ json_value(f, loop.index) }} as {{ f.name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from (
        select
            source_file,
            v,
            json_type(v, [{{ paths | join(', ') }}]) as t,
            json_extract_string(v, [{{ paths | join(', ') }}]) as s
        from (
            select filename as source_file, case when json_valid(line) then line::json end as v
            from read_csv({{ src.files }}, columns = {'line': 'VARCHAR'}, header = false, delim = '{{ delim }}',
                          quote = '', escape = '', auto_detect = false, filename = true,
                          ignore_errors = true, store_rejects = true,
                          rejects_table = '{{ kind }}__rejects_{{ loop.index }}',
                          rejects_scan = '{{ kind }}__scans_{{ loop.index }}')
        )
    )
)
{%- if not loop.last or parquet_sources %}
union all
{%- endif %}
{%- endfor %}
{%- for src in parquet_sources %}
select
    date '{{ src.day }}' as upload_date,
    filename as source_file,
    {%- for f in fields %}
    {{ src.columns[f.name] }} as {{ f.name }},
    {%- endfor %}
    coalesce({{ src.reasons | join(', ') }}{{ ', ' if src.reasons }}null::varchar) as reason
from read_parquet({{ src.files }}, filename = true)
{%- if not loop.last %}
union all
{%- endif %}
{%- endfor %};

{%- for src in json_sources %}
-- lines DuckDB's CSV reader could not even read as text (invalid UTF-8, a stray separator): not JSON either
insert into {{ kind }}__parsed
select distinct on (r.scan_id, r.file_id, r.line) date '{{ src.day }}', s.file_path,
    {%- for f in fields %} null::{{ duck_type(f.type) }},{% endfor %} 'malformed_json'
from {{ kind }}__rejects_{{ loop.index }} r join {{ kind }}__scans_{{ loop.index }} s using (scan_id, file_id);
{%- endfor %}

create or replace temp table {{ kind }}__classified as
with checked as (
    select
        * exclude (reason),
        coalesce(
            reason,
            case when schema_version <> {{ schema_version }} then 'unsupported_schema_version' end,
            case when event_type <> '{{ event_type }}' then 'wrong_event_type' end,
            case when event_time > upload_time + interval {{ future_tolerance_minutes }} minute then 'clock_skew_future' end,
            case when event_time::date < upload_date - {{ lookback_days }} then 'too_late' end
        ) as reason
    from {{ kind }}__parsed
),

ranked as (
    select
        *,
        case when reason is null then row_number() over (
            partition by event_id, reason is null
            order by upload_date, upload_time, source_file,
                     hash({% for f in fields %}{{ f.name }}{{ ', ' if not loop.last }}{% endfor %})
        ) end as copy_rank
    from checked
)

select
    * exclude (copy_rank),
    event_time::date as event_date,
    case when reason is not null then 'quarantined' when copy_rank > 1 then 'duplicate' else 'loaded' end as status
from ranked;

create or replace temp table {{ kind }}__bronze as
select * exclude (status, reason) from {{ kind }}__classified where status = 'loaded';
