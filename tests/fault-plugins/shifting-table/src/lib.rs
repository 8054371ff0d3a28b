//! shifting-table: a table-formatter that breaks the contract of a list given in parts: its
//! column's description counts the objects of the call, so two parts of different sizes are
//! answered with different columns. A list that fits one call prints fine.

use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct Shifting;

impl Guest for Shifting {
    fn format(req: TableRequest) -> Option<Table> {
        let objects: Vec<leafgate_plugin::k8s::Pod> =
            leafgate_plugin::k8s::list_from_json(&req.objects).unwrap_or_default();
        Some(Table {
            columns: vec![Column {
                name: "NAME".into(),
                type_: ColumnType::String,
                format: "name".into(),
                description: format!("one of {} objects", objects.len()),
                priority: 0,
            }],
            rows: objects
                .iter()
                .map(|p| Row {
                    cells: vec![Cell::Text(p.metadata.name.clone())],
                })
                .collect(),
        })
    }
}

leafgate_plugin::export_table_formatter!(Shifting);
