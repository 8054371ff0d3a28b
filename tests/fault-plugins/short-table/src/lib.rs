//! short-table: a table-formatter that breaks the contract by answering one row fewer
//! than it was given objects.

use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct Short;

impl Guest for Short {
    fn format(req: TableRequest) -> Option<Table> {
        let objects: Vec<leafgate_plugin::k8s::Pod> =
            leafgate_plugin::k8s::list_from_json(&req.objects).unwrap_or_default();
        Some(Table {
            columns: vec![Column {
                name: "NAME".into(),
                type_: ColumnType::String,
                format: "name".into(),
                description: String::new(),
                priority: 0,
            }],
            rows: objects
                .iter()
                .skip(1)
                .map(|p| Row {
                    cells: vec![Cell::Text(p.metadata.name.clone())],
                })
                .collect(),
        })
    }
}

leafgate_plugin::export_table_formatter!(Short);
