//! What the experiments of one evaluation recorded: every activation (by experiment), the rate
//! of every measured window of the closed-loop levels, and the rows of the experiments that
//! measure something else (memory, cost, /init, capacity, hash, footprint), each kept under its
//! own type.

use std::{
    any::{Any, TypeId},
    collections::{BTreeMap, HashMap},
};

use super::{
    load::{LevelKey, LevelRun},
    sample::Sample,
};

#[derive(Default)]
pub struct Results {
    pub samples: Vec<(&'static str, Vec<Sample>)>,
    /// The rate in each measured window of every closed-loop level, by experiment and the
    /// level's platform, scenario and level.
    pub rates: BTreeMap<(&'static str, LevelKey), Vec<f64>>,
    /// Rows by their type: a `Vec<T>` under `T`'s id.
    rows: HashMap<TypeId, Box<dyn Any>>,
}

impl Results {
    pub fn add_level(&mut self, experiment: &'static str, run: LevelRun) {
        self.rates.insert((experiment, run.key), run.rates);
        self.add(experiment, run.samples);
    }

    pub fn add(&mut self, experiment: &'static str, mut samples: Vec<Sample>) {
        match self.samples.iter_mut().find(|(e, _)| *e == experiment) {
            Some((_, all)) => all.append(&mut samples),
            None => self.samples.push((experiment, samples)),
        }
    }

    pub fn of(&self, experiment: &str) -> &[Sample] {
        self.samples
            .iter()
            .find(|(e, _)| *e == experiment)
            .map_or(&[], |(_, s)| s.as_slice())
    }

    /// Records `row` after the rows of its type.
    pub fn push_row<T: Any>(&mut self, row: T) {
        self.rows
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(Vec::<T>::new()))
            .downcast_mut::<Vec<T>>()
            .expect("the rows under a type's id are a Vec of that type")
            .push(row);
    }

    /// The rows of type `T`, in the order recorded.
    pub fn rows<T: Any>(&self) -> &[T] {
        self.rows
            .get(&TypeId::of::<T>())
            .and_then(|rows| rows.downcast_ref::<Vec<T>>())
            .map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_kept_by_type_in_order() {
        let mut results = Results::default();
        results.push_row(1u32);
        results.push_row("a");
        results.push_row(2u32);
        assert_eq!(results.rows::<u32>(), [1, 2]);
        assert_eq!(results.rows::<&str>(), ["a"]);
        assert!(results.rows::<u64>().is_empty());
    }
}
