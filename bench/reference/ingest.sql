-- DuckDB reference of jobs/ingest for one event kind (docs/ingestion.md): every landing record of
-- the upload days given is typed and validated (first failing rule wins, the job's reasons in the
-- job's order), then classified loaded / quarantined / duplicate by the dedup rule, and counted
-- per file. Rendered by bench/reference/driver.py (Jinja): `kind`, `fields` (name, type,
-- nullable), `range_checks` (field, SQL condition for a value outside its declared bounds),
-- `json_sources` (per upload day: the registered table of its JSON-lines records, one row per
-- record: source_file, line as bytes), `parquet_sources` (per upload day: files, and the
-- projection of one footer-schema group), `unreadable` (per upload day: files that cannot be
-- read), `lookback_days`, `future_tolerance_minutes`, `event_type`, `schema_version`, `suspect`.
-- Creates the tables {{ kind }}__classified and {{ kind }}__bronze.
--
-- JSON: DuckDB's parser is lenient where the job is strict (NaN / Infinity in any case, trailing
-- commas, duplicate keys) and does not tell trailing data from malformed JSON. A record DuckDB
-- rejects or that `suspect` matches, and a record with more `":` in its text than the keys
-- DuckDB found (known fields present + map entries; a duplicate key, an unknown field or a `":`
-- inside a string) is judged by json_reason() (Python's strict decoder, registered by the
-- driver); every other record is judged in SQL alone.

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
        json_reason,
        -- more `":` than the keys DuckDB saw: unknown fields, a `":` inside a string, or a duplicate key
        case when not routed and len(string_split(v, '":')) - 1 <> len(list_filter(t, lambda x: x is not null))
                {%- for f in fields if f.type.startswith('map<') %}
                + case when t[{{ loop.index }}] = 'OBJECT' then coalesce(cardinality({{ f.name }}), -1) else 0 end
                {%- endfor %}
             then json_reason(v) end
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
        routed,
        json_reason,
        t,
        {%- for f in fields %}
        {{ json_value(f, loop.index) }} as {{ f.name }}{{ ',' if not loop.last }}
        {%- endfor %}
    from (
        select
            source_file,
            v,
            routed,
            json_reason,  -- null: an object (if DuckDB cannot parse it, its fields stay null)
            case when json_reason is null and valid then json_type(v, [{{ paths | join(', ') }}]) end as t,
            case when json_reason is null and valid then json_extract_string(v, [{{ paths | join(', ') }}]) end as s
        from (
            select
                source_file,
                v,
                valid,
                routed,
                case
                    when v is null then 'malformed_json'  -- not UTF-8
                    when routed then json_reason(v)  -- Python's strict decoder: malformed_json, trailing_data, not_an_object or null
                    when json_type(v) <> 'OBJECT' then 'not_an_object'
                end as json_reason
            from (
                select source_file, v, valid, v is not null and (not valid or regexp_matches(v, '{{ suspect }}')) as routed
                from (select source_file, v, json_valid(v) as valid from (select source_file, try(decode(line)) as v from {{ src.table }}))
            )
        )
    )
)
union all
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
union all
{%- endfor %}
{%- for src in unreadable %}
-- a file that cannot be read (not gzip, truncated, no Parquet footer, unknown suffix): one record
select date '{{ src.day }}', unnest({{ src.files }}),
    {%- for f in fields %} null::{{ duck_type(f.type) }},{% endfor %} 'unreadable_file'
union all
{%- endfor %}
select null::date, null::varchar,{% for f in fields %} null::{{ duck_type(f.type) }},{% endfor %} null::varchar
where false;

create or replace temp table {{ kind }}__classified as
with checked as (
    select
        * exclude (reason),
        coalesce(
            reason,
            case when schema_version <> {{ schema_version }} then 'unsupported_schema_version' end,
            case when event_type <> '{{ event_type }}' then 'wrong_event_type' end,
            case when upload_time < upload_date::timestamptz - interval {{ future_tolerance_minutes }} minute
                   or upload_time >= (upload_date + 1)::timestamptz + interval {{ future_tolerance_minutes }} minute
                 then 'upload_time_outside_day' end,
            case when event_time > upload_time + interval {{ future_tolerance_minutes }} minute then 'clock_skew_future' end,
            case when event_time::date < upload_date - {{ lookback_days }} then 'too_late' end
            {%- for name, outside in range_checks %},
            case when {{ outside }} then 'out_of_range:{{ name }}' end
            {%- endfor %}
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
