pub mod splice;
