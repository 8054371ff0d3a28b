//! Connection slots, numbered for the tokens completions carry.

/// Values kept in numbered slots, a freed number reused first. A value may move when the
/// slab grows, so a buffer the kernel uses must be the heap part of a value (a `Vec`'s
/// bytes), never the value itself.
pub struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    pub fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.items[slot as usize] = Some(value);
                slot
            }
            None => {
                self.items.push(Some(value));
                u32::try_from(self.items.len() - 1).expect("fewer than 2^32 connections")
            }
        }
    }

    /// The value in `slot`, which holds one: a slot outlives every operation that names it.
    pub fn get(&mut self, slot: u32) -> &mut T {
        self.items[slot as usize]
            .as_mut()
            .expect("a slot outlives its operations")
    }

    pub fn remove(&mut self, slot: u32) -> T {
        let value = self.items[slot as usize]
            .take()
            .expect("a slot is removed once");
        self.free.push(slot);
        value
    }
}
