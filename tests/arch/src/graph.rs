//! A directed graph of numbered nodes: its strongly connected components (Tarjan) and the
//! longest path through its condensation.

/// Adjacency lists: `edges[a]` holds every `b` with an edge `a -> b`.
pub struct Graph {
    pub edges: Vec<Vec<usize>>,
}

impl Graph {
    pub fn new(nodes: usize) -> Graph {
        Graph {
            edges: vec![Vec::new(); nodes],
        }
    }

    pub fn add(&mut self, from: usize, to: usize) {
        if from != to && !self.edges[from].contains(&to) {
            self.edges[from].push(to);
        }
    }

    /// The strongly connected components, each sorted; a component comes after every
    /// component it reaches (reverse topological order), as Tarjan's algorithm emits them.
    pub fn components(&self) -> Vec<Vec<usize>> {
        let mut tarjan = Tarjan {
            graph: self,
            next: 0,
            index: vec![None; self.edges.len()],
            low: vec![0; self.edges.len()],
            stack: Vec::new(),
            on_stack: vec![false; self.edges.len()],
            out: Vec::new(),
        };
        for node in 0..self.edges.len() {
            if tarjan.index[node].is_none() {
                tarjan.visit(node);
            }
        }
        tarjan.out
    }

    /// Components of more than one node: the cycles.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        self.components()
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect()
    }

    /// The number of nodes on the longest path of the condensation (each cycle one node).
    pub fn levels(&self) -> usize {
        let components = self.components();
        let mut component_of = vec![0; self.edges.len()];
        for (c, nodes) in components.iter().enumerate() {
            for &node in nodes {
                component_of[node] = c;
            }
        }
        // Components come sinks first, so every successor's level is known by then.
        let mut level = vec![0; components.len()];
        for (c, nodes) in components.iter().enumerate() {
            let below = nodes
                .iter()
                .flat_map(|&n| &self.edges[n])
                .map(|&m| component_of[m])
                .filter(|&d| d != c)
                .map(|d| level[d])
                .max()
                .unwrap_or(0);
            level[c] = below + 1;
        }
        level.into_iter().max().unwrap_or(0)
    }
}

struct Tarjan<'g> {
    graph: &'g Graph,
    next: usize,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    out: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    // Recursive: the graphs here have tens of nodes.
    fn visit(&mut self, node: usize) {
        self.index[node] = Some(self.next);
        self.low[node] = self.next;
        self.next += 1;
        self.stack.push(node);
        self.on_stack[node] = true;
        for &next in &self.graph.edges[node] {
            match self.index[next] {
                None => {
                    self.visit(next);
                    self.low[node] = self.low[node].min(self.low[next]);
                }
                Some(index) if self.on_stack[next] => self.low[node] = self.low[node].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[node]) == self.index[node] {
            let mut component = Vec::new();
            loop {
                let member = self.stack.pop().expect("node is on the stack");
                self.on_stack[member] = false;
                component.push(member);
                if member == node {
                    break;
                }
            }
            component.sort_unstable();
            self.out.push(component);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(nodes: usize, edges: &[(usize, usize)]) -> Graph {
        let mut graph = Graph::new(nodes);
        for &(a, b) in edges {
            graph.add(a, b);
        }
        graph
    }

    #[test]
    fn a_chain_has_one_level_per_node_and_no_cycle() {
        let g = graph(4, &[(0, 1), (1, 2), (2, 3), (0, 3)]);
        assert!(g.cycles().is_empty());
        assert_eq!(g.levels(), 4);
    }

    #[test]
    fn a_cycle_is_one_component_and_one_level() {
        let g = graph(4, &[(0, 1), (1, 2), (2, 1), (2, 3)]);
        assert_eq!(g.cycles(), vec![vec![1, 2]]);
        assert_eq!(g.levels(), 3);
    }
}
