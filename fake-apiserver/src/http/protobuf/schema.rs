//! The protobuf form of the built-in kinds, from `go_protobuf.json` (generated from the Go types'
//! protobuf tags by `tools/control-plane/protofields`), as protobuf descriptors for prost-reflect,
//! which does the wire encoding, beside what the descriptors cannot say: each field's JSON name
//! and whether Go holds it as a value (always written) or a pointer (written when set).

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use prost_reflect::prost_types::{
    DescriptorProto, FieldDescriptorProto, FileDescriptorProto, field_descriptor_proto,
};
use prost_reflect::{DescriptorPool, MessageDescriptor};

/// A scalar as Go holds it; a value field is written even when it is the zero value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scalar {
    String,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Float64,
    /// `[]byte`: written when not nil, base64 in JSON.
    Bytes,
}

/// The types apimachinery encodes by hand, in JSON or protobuf or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Special {
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    FieldsV1,
    RawExtension,
    Json,
    PropsOrBool,
    PropsOrArray,
    PropsOrStringArray,
}

impl Special {
    fn parse(s: &str) -> Option<Special> {
        Some(match s {
            "@Time" => Special::Time,
            "@MicroTime" => Special::MicroTime,
            "@Quantity" => Special::Quantity,
            "@IntOrString" => Special::IntOrString,
            "@FieldsV1" => Special::FieldsV1,
            "@RawExtension" => Special::RawExtension,
            "@JSON" => Special::Json,
            "@PropsOrBool" => Special::PropsOrBool,
            "@PropsOrArray" => Special::PropsOrArray,
            "@PropsOrStringArray" => Special::PropsOrStringArray,
            // `@Duration` is in no served type; a table that needs it fails to load (a test says so).
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ty {
    Scalar(Scalar),
    /// A struct, by id.
    Struct(usize),
    Special(Special),
    /// A Go pointer: written only when set.
    Pointer(Box<Ty>),
    List(Box<Ty>),
    /// A map with string keys: entries sorted by key, each a message of key (1) and value (2).
    Map(Box<Ty>),
    /// A named slice with its own message (`metav1.Verbs`): the entries in its field 1.
    Items(Box<Ty>),
}

#[derive(Debug)]
pub(super) struct Field {
    pub number: u32,
    /// Empty for a struct inlined in JSON (`VolumeSource` in `Volume`).
    pub json: Box<str>,
    pub ty: Ty,
}

#[derive(Debug)]
pub(super) struct Struct {
    pub name: Box<str>,
    pub fields: Vec<Field>,
}

pub(super) struct Schema {
    /// "apiVersion/Kind" -> struct.
    kinds: HashMap<String, usize>,
    pub structs: Vec<Struct>,
    /// Struct ids by name.
    ids: HashMap<String, usize>,
    /// The message each special type is written as.
    specials: BTreeMap<Special, usize>,
    /// By struct id.
    messages: Vec<MessageDescriptor>,
    /// By the entry's (or items message's) type, as the table spells it.
    wrappers: HashMap<String, MessageDescriptor>,
}

const TABLE: &str = include_str!("go_protobuf.json");

#[derive(serde::Deserialize)]
struct File {
    kinds: BTreeMap<String, String>,
    specials: BTreeMap<String, String>,
    types: BTreeMap<String, Vec<(u32, String, String)>>,
}

/// Loaded on first use; a table that does not load leaves protobuf unserved (and fails a test).
pub(super) static SCHEMA: LazyLock<Result<Schema, String>> = LazyLock::new(|| Schema::load(TABLE));

const PACKAGE: &str = "tollgate.k8s";

impl Schema {
    pub(super) fn get() -> Option<&'static Schema> {
        match &*SCHEMA {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(%e, "go_protobuf.json does not load: protobuf is not served");
                None
            }
        }
    }

    /// The struct a kind is, by its apiVersion and kind.
    pub(super) fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        if api_version.is_empty() || kind.is_empty() {
            return None;
        }
        self.kinds.get(&format!("{api_version}/{kind}")).copied()
    }

    /// A type of the wire format itself (`Unknown`, `WatchEvent`), which has no apiVersion.
    pub(super) fn internal(&self, name: &str) -> Result<usize, String> {
        self.kinds
            .get(name)
            .copied()
            .ok_or_else(|| format!("no {name} in the table"))
    }

    pub(super) fn special(&self, s: Special) -> usize {
        self.specials[&s]
    }

    pub(super) fn message(&self, id: usize) -> &MessageDescriptor {
        &self.messages[id]
    }

    /// The entry message of a map, or the message of a named slice, of type `ty`.
    pub(super) fn wrapper(&self, ty: &Ty) -> &MessageDescriptor {
        &self.wrappers[&wrapper_name(ty)]
    }

    pub(super) fn by_name(&self, name: &str) -> Option<usize> {
        self.ids.get(name).copied()
    }

    fn load(json: &str) -> Result<Schema, String> {
        let file: File = serde_json::from_str(json).map_err(|e| e.to_string())?;
        let ids: HashMap<&str, usize> = file
            .types
            .keys()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut structs = Vec::with_capacity(file.types.len());
        for (name, fields) in &file.types {
            let fields = fields
                .iter()
                .map(|(number, json, ty)| {
                    Ok(Field {
                        number: *number,
                        json: json.as_str().into(),
                        ty: parse_ty(ty, &ids).ok_or_else(|| format!("{name}.{json}: {ty}"))?,
                    })
                })
                .collect::<Result<Vec<_>, String>>()?;
            structs.push(Struct {
                name: name.as_str().into(),
                fields,
            });
        }
        let lookup = |n: &str| {
            ids.get(n)
                .copied()
                .ok_or_else(|| format!("no type {n} in the table"))
        };
        let mut kinds = HashMap::new();
        for (kind, ty) in &file.kinds {
            kinds.insert(kind.clone(), lookup(ty)?);
        }
        let mut specials = BTreeMap::new();
        for (symbol, ty) in &file.specials {
            if let Some(s) = Special::parse(symbol) {
                specials.insert(s, lookup(ty)?);
            }
        }
        let (pool, wrapper_names) = descriptors(&structs, &specials)?;
        let messages = (0..structs.len())
            .map(|id| {
                pool.get_message_by_name(&format!("{PACKAGE}.{}", message_name(id)))
                    .ok_or_else(|| format!("no descriptor for {}", structs[id].name))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let wrappers = wrapper_names
            .into_iter()
            .map(|(ty, name)| {
                pool.get_message_by_name(&format!("{PACKAGE}.{name}"))
                    .map(|m| (ty, m))
                    .ok_or_else(|| format!("no descriptor {name}"))
            })
            .collect::<Result<HashMap<_, _>, String>>()?;
        let ids = ids.into_iter().map(|(n, i)| (n.to_string(), i)).collect();
        Ok(Schema {
            kinds,
            ids,
            structs,
            specials,
            messages,
            wrappers,
        })
    }
}

fn parse_ty(s: &str, ids: &HashMap<&str, usize>) -> Option<Ty> {
    Some(if let Some(inner) = s.strip_prefix('?') {
        Ty::Pointer(Box::new(parse_ty(inner, ids)?))
    } else if let Some(inner) = s.strip_prefix("[]") {
        Ty::List(Box::new(parse_ty(inner, ids)?))
    } else if let Some(inner) = s.strip_prefix("{string}") {
        Ty::Map(Box::new(parse_ty(inner, ids)?))
    } else if let Some(inner) = s.strip_prefix("@items[]") {
        Ty::Items(Box::new(parse_ty(inner, ids)?))
    } else if s.starts_with('@') {
        Ty::Special(Special::parse(s)?)
    } else {
        Ty::Scalar(match s {
            "string" => Scalar::String,
            "bool" => Scalar::Bool,
            "int32" => Scalar::Int32,
            "int64" => Scalar::Int64,
            "uint32" => Scalar::Uint32,
            "uint64" => Scalar::Uint64,
            "float64" => Scalar::Float64,
            "bytes" => Scalar::Bytes,
            _ => return Some(Ty::Struct(*ids.get(s)?)),
        })
    })
}

fn message_name(id: usize) -> String {
    format!("T{id}")
}

/// The key a map entry's or named slice's message is found by: its type, spelled out.
fn wrapper_name(ty: &Ty) -> String {
    format!("{ty:?}")
}

/// One proto2 file with a message per struct (`T<id>`), per map entry type and per named slice
/// type (`W<n>`). Maps are declared as repeated entry messages, which is their wire form, so that
/// entries keep the sorted order Go writes them in.
fn descriptors(
    structs: &[Struct],
    specials: &BTreeMap<Special, usize>,
) -> Result<(DescriptorPool, HashMap<String, String>), String> {
    let mut wrappers: BTreeMap<String, DescriptorProto> = BTreeMap::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let mut messages = Vec::with_capacity(structs.len());
    for (id, st) in structs.iter().enumerate() {
        let mut fields = Vec::with_capacity(st.fields.len());
        for f in &st.fields {
            let mut proto = field_proto(f.number, &f.ty, specials, &mut wrappers, &mut names)?;
            proto.name = Some(format!("f{}", f.number));
            fields.push(proto);
        }
        messages.push(DescriptorProto {
            name: Some(message_name(id)),
            field: fields,
            ..Default::default()
        });
    }
    messages.extend(wrappers.into_values());
    let file = FileDescriptorProto {
        name: Some("tollgate/k8s.proto".into()),
        package: Some(PACKAGE.into()),
        syntax: Some("proto2".into()),
        message_type: messages,
        ..Default::default()
    };
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_proto(file)
        .map_err(|e| e.to_string())?;
    Ok((pool, names))
}

/// A field of type `ty`: its label and type; a map's entry or a named slice's message is made on
/// first use.
fn field_proto(
    number: u32,
    ty: &Ty,
    specials: &BTreeMap<Special, usize>,
    wrappers: &mut BTreeMap<String, DescriptorProto>,
    names: &mut HashMap<String, String>,
) -> Result<FieldDescriptorProto, String> {
    use field_descriptor_proto::{Label, Type};
    let message = |type_name: String| FieldDescriptorProto {
        number: Some(number as i32),
        label: Some(Label::Optional as i32),
        r#type: Some(Type::Message as i32),
        type_name: Some(format!(".{PACKAGE}.{type_name}")),
        ..Default::default()
    };
    Ok(match ty {
        Ty::Pointer(inner) => field_proto(number, inner, specials, wrappers, names)?,
        Ty::List(inner) => {
            let mut f = field_proto(number, inner, specials, wrappers, names)?;
            f.label = Some(Label::Repeated as i32);
            f
        }
        Ty::Struct(id) => message(message_name(*id)),
        Ty::Special(s) => message(message_name(
            *specials
                .get(s)
                .ok_or_else(|| format!("no message for {s:?}"))?,
        )),
        Ty::Map(value) => {
            let mut key = field_proto(1, &Ty::Scalar(Scalar::String), specials, wrappers, names)?;
            key.name = Some("key".into());
            let mut value = field_proto(2, value, specials, wrappers, names)?;
            value.name = Some("value".into());
            let mut f = message(wrap(ty, vec![key, value], wrappers, names));
            f.label = Some(Label::Repeated as i32);
            f
        }
        Ty::Items(item) => {
            let mut items = field_proto(1, item, specials, wrappers, names)?;
            items.label = Some(Label::Repeated as i32);
            items.name = Some("items".into());
            message(wrap(ty, vec![items], wrappers, names))
        }
        Ty::Scalar(s) => FieldDescriptorProto {
            number: Some(number as i32),
            label: Some(Label::Optional as i32),
            r#type: Some(match s {
                Scalar::String => Type::String,
                Scalar::Bool => Type::Bool,
                Scalar::Int32 => Type::Int32,
                Scalar::Int64 => Type::Int64,
                Scalar::Uint32 => Type::Uint32,
                Scalar::Uint64 => Type::Uint64,
                Scalar::Float64 => Type::Double,
                Scalar::Bytes => Type::Bytes,
            } as i32),
            ..Default::default()
        },
    })
}

/// The name of the message that wraps `ty` (a map's entry, a named slice), made on first use.
fn wrap(
    ty: &Ty,
    fields: Vec<FieldDescriptorProto>,
    wrappers: &mut BTreeMap<String, DescriptorProto>,
    names: &mut HashMap<String, String>,
) -> String {
    let key = wrapper_name(ty);
    if let Some(name) = names.get(&key) {
        return name.clone();
    }
    let name = format!("W{}", names.len());
    wrappers.insert(
        name.clone(),
        DescriptorProto {
            name: Some(name.clone()),
            field: fields,
            ..Default::default()
        },
    );
    names.insert(key, name.clone());
    name
}
